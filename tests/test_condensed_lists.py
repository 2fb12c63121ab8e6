"""The metrics over judged documents only, by hand arithmetic: P'@k, nDCG'@k and AP' score the condensed
list (Sakai 2007: the ranking with its unjudged documents removed, then cut at k), Bpref is trec_eval's
bpref (Buckley & Voorhees 2004). Each expected value is worked out below and checked on the reference,
on the SQL engine and through a workspace refresh; n/a stays n/a, a failure scores 0."""
from __future__ import annotations

import math

import pytest
from fixtures import engine_rows, engine_scores, record, stored_scores, write_workspace_files

from scoring import REGISTRY, metric, parse_measure
from scoring.metrics import CONDENSED, JUDGED_ONLY_KEYS, RANKING_KEYS
from scoring.metrics.engine import WHOLE_RANKING
from scoring.metrics.reference import Labels, Output, score_question

KEYS = ("precision", "precision_condensed", "ndcg_condensed", "ap_condensed", "bpref")

# Grades: a 2, c 1, e 1 relevant at level 1 (R = 3); b 0 and d -1 judged non-relevant (N = 2);
# x, y, z unjudged. The ranking puts unjudged documents in front.
GRADES = {"a": 2, "b": 0, "c": 1, "d": -1, "e": 1}
RANKING = ("x", "b", "y", "a", "c", "z", "d", "e")
CORPUS = {doc: f"text {doc}" for doc in "abcdexyz"}


def _log2(n: int) -> float:
    return math.log2(n)


# At k = 3 the first three slots x, b, y hold no relevant document: P@3 = 0. The condensed list is
# b, a, c, d, e; its first three b, a, c hold a (rank 2) and c (rank 3).
#   P'@3   = 2/3
#   nDCG'@3 = (0 + 2/log2 3 + 1/log2 4) / (2/log2 2 + 1/log2 3 + 1/log2 4)   ideal grades 2, 1, 1
#   AP'@3  = (1/2 + 2/3) / 3 = 7/18
#   Bpref@3: no relevant document in the first three slots = 0
# Whole ranking: AP' = (1/2 + 2/3 + 3/5) / 3 = 53/90; Bpref: a and c have one judged non-relevant
# document above them (b): 1 - min(1, 3)/min(3, 2) = 1/2 each; e has two (b, d): 1 - 2/2 = 0;
# (1/2 + 1/2 + 0) / 3 = 1/3. At k = 4 the slots x, b, y, a hold a: P@4 = 1/4, Bpref@4 = (1/2) / 3; the
# condensed list's first four b, a, c, d hold a and c: P'@4 = 2/4, AP'@4 = 7/18 again.
NDCG_3 = (2 / _log2(3) + 1 / _log2(4)) / (2 + 1 / _log2(3) + 1 / _log2(4))
EXPECTED = {
    3: {"precision": 0.0, "precision_condensed": 2 / 3, "ndcg_condensed": NDCG_3, "ap_condensed": 7 / 18,
        "bpref": 0.0},
    4: {"precision": 1 / 4, "precision_condensed": 2 / 4, "ap_condensed": 7 / 18, "bpref": 1 / 2 / 3},
    WHOLE_RANKING: {"ap_condensed": 53 / 90, "bpref": 1 / 3},
}
# At level 2 only a is relevant (R = 1) and b, c, d, e are judged non-relevant (N = 4): P'@3 = 1/3,
# AP'@3 = (1/2) / 1; Bpref: b is above a: 1 - min(1, 1)/min(1, 4) = 0. nDCG' keeps the grades as gains.
AT_LEVEL_2 = {"precision_condensed": 1 / 3, "ndcg_condensed": NDCG_3, "ap_condensed": 1 / 2, "bpref": 0.0}


def _reference(grades, ranking, k, *, level=1, status="ok"):
    return score_question(Labels(grades, {}), Output(tuple(ranking)), k=k, level=level, known=CORPUS, status=status)


def _engine(grades, ranking, cutoffs, *, level=1, status="ok"):
    cases = {"q": {"relevant": grades, "support": {}}}
    rows = engine_rows(CORPUS, cases, {("r", "q"): {"retrieved": tuple(ranking), "claims": ()}}, k=cutoffs,
                       statuses={("r", "q"): status})
    scores, _ = engine_scores(rows, level=level, by_cutoff=True)
    return {k: scores[("r", "q", k)] for k in cutoffs}


def _agree(found: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, abs=1e-12), key


@pytest.mark.parametrize("k", sorted(EXPECTED))
def test_condensed_list_and_bpref_by_hand(k):
    _agree(_reference(GRADES, RANKING, k), EXPECTED[k])
    _agree(_engine(GRADES, RANKING, [k])[k], EXPECTED[k])


def test_the_relevance_level_decides_relevant_and_judged_non_relevant():
    _agree(_reference(GRADES, RANKING, 3, level=2), AT_LEVEL_2)
    _agree(_engine(GRADES, RANKING, [3], level=2)[3], AT_LEVEL_2)


def test_without_judged_non_relevant_documents_each_relevant_one_scores_one():
    # Only a is labelled (N = 0): Bpref's term is 1 whatever stands above a; the condensed list is a alone.
    for found in (_reference({"a": 1}, ("x", "a"), 1), _engine({"a": 1}, ("x", "a"), [1])[1]):
        _agree(found, {"precision": 0.0, "precision_condensed": 1.0, "ndcg_condensed": 1.0, "ap_condensed": 1.0,
                       "bpref": 0.0})
    for found in (_reference({"a": 1}, ("x", "a"), 2), _engine({"a": 1}, ("x", "a"), [2])[2]):
        _agree(found, {"precision": 1 / 2, "precision_condensed": 1 / 2, "bpref": 1.0})


def test_unanswerable_question_is_na_never_zero():
    # Judged documents ranked, none relevant: n/a like the standard twins, not 0.
    for found in (_reference({"b": 0, "d": -1}, RANKING, 3), _engine({"b": 0, "d": -1}, RANKING, [3])[3]):
        assert all(found[key] is None for key in KEYS), found


@pytest.mark.parametrize("status", ["missing", "failed"])
def test_a_failure_and_an_empty_ranking_score_zero(status):
    for found in (_reference(GRADES, RANKING, 3, status=status), _engine(GRADES, RANKING, [3], status=status)[3],
                  _reference(GRADES, (), 3), _engine(GRADES, (), [3])[3]):
        assert all(found[key] == 0.0 for key in KEYS), found


def test_an_empty_chunk_slot_leaves_the_condensed_list():
    # A later chunk of a counted document leaves its slot empty (None): not a document, so not in the list.
    found = _reference({"a": 1, "b": 0}, ("b", None, "a"), 2)
    _agree(found, {"precision": 0.0, "precision_condensed": 1 / 2, "ap_condensed": 1 / 2, "bpref": 0.0})


def test_registry_declares_the_twins_and_their_contract():
    assert JUDGED_ONLY_KEYS == ("precision_condensed", "ndcg_condensed", "ap_condensed", "bpref")
    assert not set(JUDGED_ONLY_KEYS) & set(RANKING_KEYS)
    assert {key: twin.name for key, twin in CONDENSED.items()} == {"precision": "P'@k", "ndcg": "nDCG'@k",
                                                                   "ap": "AP'@k"}
    assert metric("bpref").name == "Bpref@k" and metric("Bpref").key == "bpref"
    cutoffs = {"P'": "required", "nDCG'": "required", "AP'": "optional", "Bpref": "optional"}
    for m in REGISTRY:
        if m.judged_only:
            assert m.relevance_required and "never 0" in m.na_rule, m.key
            assert "judged" in m.numerator and "judged" in m.help, m.key
            assert m.cutoff == cutoffs[m.family], m.key


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("P'@10", "P'@10"), ("P(judged_only=True)@10", "P'@10"), ("nDCG(judged_only=True)@5", "nDCG'@5"),
     ("AP(judged_only=True)", "AP'"), ("AP(judged_only=True,rel=2)@5", "AP'(rel=2)@5"), ("P(judged_only=False)@3", "P@3"),
     ("bpref", "Bpref"), ("Bpref(rel=2)", "Bpref(rel=2)"), ("Bpref@10", "Bpref@10"), ("precision_condensed@4", "P'@4")],
)
def test_ir_measures_and_trec_eval_spellings_parse_to_the_twins(text, canonical):
    assert str(parse_measure(text)) == canonical
    assert str(parse_measure(canonical)) == canonical


def test_judged_only_needs_a_metric_with_a_twin():
    for text in ("R(judged_only=True)@5", "Bpref(judged_only=True)", "Support(judged_only=True)"):
        with pytest.raises(ValueError, match="judged_only applies to"):
            parse_measure(text)


def test_a_workspace_refresh_reaches_past_k_for_the_condensed_list(tmp_path):
    """The stored ranking is longer than k = 3: the condensed list takes its first three judged documents
    from all eight slots; the standard P@3 sees the first three slots only."""
    q = {"id": "q1", "text": "Which?", "relevant": GRADES, "support": {}, "type": "lookup", "split": "dev",
         "critical": False, "tags": []}
    docs = [{"id": doc, "text": f"Text of {doc}."} for doc in sorted(CORPUS)]
    ws = write_workspace_files(tmp_path / "ws", [q], {"r": {"k": 3, "records": [record("q1", RANKING)]},
                                                      "r4": {"k": 4, "records": [record("q1", RANKING)]}},
                               documents=docs)
    stored = stored_scores(ws, tmp_path / "db.duckdb", ", ".join(KEYS))
    for run, k in (("r", 3), ("r4", 4)):
        _agree(dict(zip(KEYS, stored[(run, "q1")])), EXPECTED[k])


def test_a_policy_gate_names_them_by_any_registry_name():
    from scoring.decide.policy import parse_policy

    pol = parse_policy('''name = "judged-only"
[[gates]]
metric = "P'@k"
min = 0.5
[[gates]]
metric = "bpref"
slice = "answerable"
max_regressions = 0
[[gates]]
metric = "ap_condensed"
max_drop = 0.02
''', path="policy.toml")
    assert [g.metric for g in pol.gates] == ["precision_condensed", "bpref", "ap_condensed"]
    assert [g.name for g in pol.gates][0].startswith("P'@k on ")


@pytest.mark.parametrize(("key", "label"), [("precision_condensed", "P'@k"), ("bpref", "Bpref@k")])
def test_the_release_review_shows_their_tile_from_the_registry(demo_db, monkeypatch, key, label):
    from streamlit.testing.v1 import AppTest

    from fixtures import REPO

    monkeypatch.setenv("RAGSLICE_DB", str(demo_db))
    at = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=120)
    at.query_params.update(suite="demo", baseline="prod-baseline", candidate="rerank-v2", metric=key)
    at.switch_page("views/release_review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    tile = next(m for m in at.metric if m.label == label)
    assert "judged" in tile.proto.help

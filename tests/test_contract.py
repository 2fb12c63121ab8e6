"""The scoring contract of the reference implementation (`scoring.evaluate`), by hand arithmetic.

Expected values are written out as fractions of counts from the fixtures; none is read back
from the code under test.
"""
from __future__ import annotations

import gc
import math
import sys
import tracemalloc
from copy import deepcopy
from pathlib import Path

import pytest
from seed_fixture import CASES, CORPUS, EXPECTED_TABLE, RUNS
from fixtures import display

from scoring import ValidationError, claim_verdicts, evaluate, validate_corpus
from scoring.metrics.reference import Labels, Output, score_question

SEED_KEYS = ("precision", "recall", "rr", "support", "coverage", "abstention_correct")


def seed(name: str, system: str, **kwargs):
    return evaluate(CORPUS, CASES[name], RUNS[name][system], **kwargs)


def owner_run(retrieved=("owners", "archive"), *claims):
    return {"retrieved": retrieved, "claims": tuple(claims)}


# --- the seed's ten behaviours -------------------------------------------------------------


def test_short_list_keeps_the_cutoff_as_precision_denominator():
    # rollback A returns one document at k=2: 1 relevant hit / 2 slots; 1 of 2 relevant found.
    score = seed("rollback", "A")
    assert (score["precision"], score["recall"]) == (1 / 2, 1 / 2)


def test_good_retrieval_does_not_hide_an_extra_unsupported_claim():
    score = seed("launch", "B")
    assert score["recall"] == 1.0
    assert score["support"] == 1 / 2  # monday supported, bonus has no label
    assert score["coverage"] == 1.0


def test_complete_supported_answer():
    score = seed("rollback", "B")
    assert (score["support"], score["coverage"]) == (1.0, 1.0)


def test_existing_but_wrong_citation_is_not_support():
    score = seed("owner", "A")
    assert (score["recall"], score["rr"]) == (1.0, 1 / 2)
    assert (score["support"], score["coverage"]) == (0.0, 0.0)


def test_citation_outside_the_visible_context_is_unsupported():
    # At k=1 only `rollback` is visible: switch is supported, smoke cites the hidden checklist.
    score = seed("rollback", "B", k=1)
    assert (score["support"], score["coverage"]) == (1 / 2, 1 / 2)


@pytest.mark.parametrize("citations", [(), ("unknown",), ("owners", "archive"), ("archive", "owners")])
def test_missing_unknown_or_mixed_citations_do_not_support(citations):
    score = evaluate(CORPUS, CASES["owner"], owner_run(("owners", "archive"), ("aurora", citations)))
    assert score["support"] == 0.0
    assert score["coverage"] == 0.0


def test_abstention_is_separate_from_not_applicable():
    score = seed("region", "B")
    assert score["precision"] is None and score["recall"] is None and score["rr"] is None
    assert score["support"] is None and score["coverage"] is None
    assert score["abstention_correct"] is True
    assert seed("region", "A")["abstention_correct"] is False
    assert seed("region", "A")["support"] == 0.0


def test_answerable_abstention_has_zero_coverage():
    score = evaluate(CORPUS, CASES["owner"], {"retrieved": (), "claims": ()})
    assert score["coverage"] == 0.0
    assert score["support"] is None
    assert score["abstention_correct"] is None
    # An empty retrieval on an answerable question scores zero, not n/a.
    assert (score["precision"], score["recall"], score["rr"]) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    "run, field",
    [
        ({"retrieved": ("owners", "owners"), "claims": ()}, "retrieved"),
        ({"retrieved": ("owners",), "claims": (("aurora", ("owners",)),) * 2}, "claims"),
        ({"retrieved": ("owners",), "claims": (("aurora", ("owners", "owners")),)}, "citations of 'aurora'"),
    ],
)
def test_duplicate_documents_and_claims_are_rejected(run, field):
    with pytest.raises(ValidationError, match="duplicate ID") as err:
        evaluate(CORPUS, CASES["owner"], run)
    assert err.value.problems[0].field == field


def test_invalid_labels_are_rejected():
    case = deepcopy(CASES["owner"])
    case["support"]["aurora"] = ("archive",)
    with pytest.raises(ValidationError, match="labelled relevant"):
        evaluate(CORPUS, case, RUNS["owner"]["B"])


@pytest.mark.parametrize("k", [0, True, False, 1.5, 101, -1, "2", None, 2.0])
def test_invalid_cutoffs_are_rejected(k):
    with pytest.raises(ValidationError) as err:
        seed("owner", "B", k=k)
    assert isinstance(err.value, ValueError)
    assert err.value.problems[0].field == "k"
    assert repr(k) in str(err.value)


@pytest.mark.parametrize("k", [1, 2, 100])
def test_cutoffs_at_the_bounds_are_accepted(k):
    assert seed("owner", "B", k=k)["rr"] == 1.0


# --- the seed's table ------------------------------------------------------------------------


def test_seed_table_is_reproduced_exactly():
    lines = ["case system | P@2 R@2 RR@2 support coverage abstention"]
    for name, case in CASES.items():
        for system, run in RUNS[name].items():
            score = evaluate(CORPUS, case, run, k=2)
            assert tuple(score)[:6] == SEED_KEYS
            lines.append(f"{name} {system} | " + " ".join(display(score[key]) for key in SEED_KEYS))
    assert "\n".join(lines) + "\n" == EXPECTED_TABLE


def test_seed_answerable_means_match_the_seed_text():
    answerable = [n for n in CASES if CASES[n]["relevant"]]
    for system, recall, support in (("A", (1 + 0.5 + 1) / 3, (1 + 1 + 0) / 3), ("B", 1.0, (0.5 + 1 + 1) / 3)):
        scores = [seed(n, system) for n in answerable]
        assert math.isclose(sum(s["recall"] for s in scores) / 3, recall)
        assert math.isclose(sum(s["support"] for s in scores) / 3, support)


def test_evaluate_does_not_mutate_its_inputs():
    corpus, cases, runs = deepcopy(CORPUS), deepcopy(CASES), deepcopy(RUNS)
    for name, case in cases.items():
        for run in runs[name].values():
            evaluate(corpus, case, run)
    assert (corpus, cases, runs) == (CORPUS, CASES, RUNS)


# --- validation: every rule names field, offending value and rule -----------------------------


def _case(**changes):
    case = deepcopy(CASES["owner"])
    case.update(changes)
    return case


def _run(**changes):
    run = deepcopy(RUNS["owner"]["B"])
    run.update(changes)
    return run


OWNER, RUN = CASES["owner"], RUNS["owner"]["B"]
INVALID = [
    # (id, corpus, case, run, keyword args, field, offending value as shown, rule fragment)
    ("level-zero", CORPUS, OWNER, RUN, {"level": 0}, "level", "0", "relevance level"),
    ("level-bool", CORPUS, OWNER, RUN, {"level": True}, "level", "True", "relevance level"),
    ("corpus-list", ["launch"], OWNER, RUN, {}, "corpus", "'list'", "non-empty dict"),
    ("corpus-empty", {}, OWNER, RUN, {}, "corpus", "'dict'", "non-empty dict"),
    ("blank-text", CORPUS | {"owners": "  "}, OWNER, RUN, {}, "corpus['owners']", "'  '", "non-empty"),
    ("text-not-str", CORPUS | {"owners": 7}, OWNER, RUN, {}, "corpus['owners']", "7", "non-empty"),
    ("case-list", CORPUS, ["owner"], RUN, {}, "case", "'list'", "expected a dict"),
    ("run-list", CORPUS, OWNER, ["owners"], {}, "run", "'list'", "expected a dict"),
    ("relevant-str", CORPUS, _case(relevant="owners"), RUN, {}, "relevant", "'owners'", "tuple of IDs"),
    ("relevant-missing", CORPUS, {"support": {}}, RUN, {}, "relevant", "None", "tuple of IDs"),
    ("relevant-bad-id", CORPUS, _case(relevant=("Owners",)), RUN, {}, "relevant", "'Owners'", "lowercase"),
    ("relevant-not-str", CORPUS, _case(relevant=(7,)), RUN, {}, "relevant", "7", "lowercase"),
    ("relevant-long-id", CORPUS, _case(relevant=("a" * 33,)), RUN, {}, "relevant", "'aaaa", "at most 32"),
    ("relevant-dup", CORPUS, _case(relevant=("owners", "owners")), RUN, {}, "relevant", "'owners'", "duplicate"),
    ("relevant-unknown", CORPUS, _case(relevant=("ghost",)), RUN, {}, "relevant", "'ghost'", "not a document"),
    ("grade-float", CORPUS, _case(relevant={"owners": 1.5}), RUN, {}, "relevant['owners']", "1.5", "whole number"),
    ("grade-bool", CORPUS, _case(relevant={"owners": True}), RUN, {}, "relevant['owners']", "True", "whole number"),
    ("support-tuple", CORPUS, _case(support=("aurora",)), RUN, {}, "support", "('aurora',)", "dict of claim"),
    ("support-bad-id", CORPUS, _case(support={"Aurora": ("owners",)}), RUN, {}, "support", "'Aurora'", "lowercase"),
    ("relevant-no-claims", CORPUS, _case(support={}), RUN, {}, "support", "{}", "needs expected claims"),
    (
        "claims-no-relevant",
        CORPUS,
        _case(relevant=()),
        RUN,
        {},
        "support",
        "{'aurora': ('owners',)}",
        "need relevant documents",
    ),
    (
        "claims-only-zero-grades",
        CORPUS,
        _case(relevant={"owners": 0}),
        RUN,
        {},
        "support",
        "{'aurora'",
        "need relevant documents",
    ),
    ("sources-empty", CORPUS, _case(support={"aurora": ()}), RUN, {}, "support['aurora']", "()", "at least one"),
    (
        "sources-not-relevant",
        CORPUS,
        _case(support={"aurora": ("owners", "archive")}),
        RUN,
        {},
        "support['aurora']",
        "['archive']",
        "labelled relevant",
    ),
    (
        "sources-negative-grade",
        CORPUS,
        _case(relevant={"owners": 1, "archive": -1}, support={"aurora": ("archive",)}),
        RUN,
        {},
        "support['aurora']",
        "['archive']",
        "labelled relevant",
    ),
    ("sources-str", CORPUS, _case(support={"aurora": "owners"}), RUN, {}, "support['aurora']", "'owners'", "tuple"),
    (
        "sources-dup",
        CORPUS,
        _case(support={"aurora": ("owners", "owners")}),
        RUN,
        {},
        "support['aurora']",
        "'owners'",
        "duplicate",
    ),
    ("caller-str", CORPUS, _case(caller="staff"), RUN, {}, "caller", "'staff'", "group names"),
    ("caller-empty-name", CORPUS, _case(caller=("",)), RUN, {}, "caller", "('',)", "group names"),
    ("retrieved-missing", CORPUS, OWNER, {"claims": ()}, {}, "retrieved", "None", "tuple of IDs"),
    ("retrieved-unknown", CORPUS, OWNER, _run(retrieved=("ghost",)), {}, "retrieved", "'ghost'", "not a document"),
    ("retrieved-bad-id", CORPUS, OWNER, _run(retrieved=("Owners",)), {}, "retrieved", "'Owners'", "lowercase"),
    ("claims-missing", CORPUS, OWNER, {"retrieved": ()}, {}, "claims", "None", "(claim, citations) pairs"),
    ("claims-str", CORPUS, OWNER, _run(claims="aurora"), {}, "claims", "'aurora'", "(claim, citations) pairs"),
    ("claim-single", CORPUS, OWNER, _run(claims=(("aurora",),)), {}, "claims", "('aurora',)", "pair"),
    (
        "claim-triple",
        CORPUS,
        OWNER,
        _run(claims=(("aurora", ("owners",), "x"),)),
        {},
        "claims",
        "('aurora', ('owners',), 'x')",
        "pair",
    ),
    ("claim-bad-id", CORPUS, OWNER, _run(claims=(("Aurora", ("owners",)),)), {}, "claims", "'Aurora'", "lowercase"),
    (
        "citations-str",
        CORPUS,
        OWNER,
        _run(claims=(("aurora", "owners"),)),
        {},
        "citations of 'aurora'",
        "'owners'",
        "tuple of IDs",
    ),
    (
        "citation-bad-id",
        CORPUS,
        OWNER,
        _run(claims=(("aurora", ("Owners",)),)),
        {},
        "citations of 'aurora'",
        "'Owners'",
        "lowercase",
    ),
]


@pytest.mark.parametrize(
    "corpus, case, run, kwargs, field, shown, rule", [row[1:] for row in INVALID], ids=[row[0] for row in INVALID]
)
def test_every_validation_rule_names_field_value_and_rule(corpus, case, run, kwargs, field, shown, rule):
    with pytest.raises(ValidationError) as err:
        evaluate(corpus, case, run, **kwargs)
    message = str(err.value)
    assert isinstance(err.value, ValueError)
    assert f"field {field!r}" in message
    assert shown in message
    assert rule in message
    assert err.value.problems[0].field == field


def test_unknown_citations_are_valid_input():
    score = evaluate(CORPUS, OWNER, _run(claims=(("aurora", ("unknown",)),)))
    assert score["support"] == 0.0


def test_validate_corpus_checks_the_whole_corpus_once():
    validate_corpus(CORPUS)
    for corpus, field, shown in (
        ({}, "corpus", "'dict'"),
        (CORPUS | {"Archive": "x"}, "corpus", "'Archive'"),
        (CORPUS | {"spare": " "}, "corpus['spare']", "' '"),
    ):
        with pytest.raises(ValidationError) as err:
            validate_corpus(corpus)
        assert f"field {field!r}" in str(err.value) and shown in str(err.value)


# --- the 100-ID bound and large corpora -------------------------------------------------------

BIG = {f"d{i:03d}": f"note {i}" for i in range(150)}
DOCS = tuple(BIG)


def _bounded(n: int, which: str):
    """A valid case/run pair whose list `which` holds exactly `n` IDs."""
    relevant = {"relevant": DOCS[:n], "sources": DOCS[:100]}.get(which, ("d000",))
    claims_n = n if which in ("support", "claims") else 1
    support = {f"c{i}": ("d000",) for i in range(n if which == "support" else 1)}
    if which == "sources":
        support = {"c0": DOCS[:n]}
    case = {"relevant": relevant, "support": support}
    run = {
        "retrieved": DOCS[:n] if which == "retrieved" else ("d000",),
        "claims": tuple((f"c{i}", ("d000",)) for i in range(claims_n))
        if which != "citations"
        else (("c0", DOCS[:n]),),
    }
    return case, run


LISTS = {
    "relevant": "relevant",
    "sources": "support['c0']",
    "support": "support",
    "retrieved": "retrieved",
    "claims": "claims",
    "citations": "citations of 'c0'",
}


@pytest.mark.parametrize("which", LISTS)
def test_per_question_lists_hold_at_most_100_ids(which):
    case, run = _bounded(100, which)
    evaluate(BIG, case, run)
    case, run = _bounded(101, which)
    with pytest.raises(ValidationError) as err:
        evaluate(BIG, case, run)
    assert err.value.problems[0].field == LISTS[which]
    assert "100" in str(err.value)


def test_lists_are_accepted_like_tuples():
    for name, case in CASES.items():
        for run in RUNS[name].values():
            as_lists = {
                "relevant": list(case["relevant"]),
                "support": {c: list(d) for c, d in case["support"].items()},
            }
            run_lists = {"retrieved": list(run["retrieved"]), "claims": [[c, list(d)] for c, d in run["claims"]]}
            assert evaluate(CORPUS, as_lists, run_lists) == evaluate(CORPUS, case, run)


def _work(corpus, case, run) -> tuple[int, int]:
    """(lines of the scoring package executed, peak bytes allocated) by one `evaluate` call. Only the
    package's own lines count, with the garbage collector paused: a finalizer of another test's object
    that a collection runs during the call is not the call's work."""
    executed = 0
    package = str(Path(evaluate.__code__.co_filename).parents[1])

    def trace(frame, event, arg):
        nonlocal executed
        if not frame.f_code.co_filename.startswith(package):
            return None
        executed += event == "line"
        return trace

    gc.collect()
    gc.disable()
    tracemalloc.start()
    sys.settrace(trace)
    try:
        evaluate(corpus, case, run)
    finally:
        sys.settrace(None)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        gc.enable()
    return executed, peak


def test_large_corpus_is_accepted_and_not_revalidated_per_call():
    corpus = {f"doc-{i}": f"note {i}" for i in range(100_000)}
    validate_corpus(corpus)  # no size bound on the corpus itself
    corpus |= CORPUS
    case, run = CASES["rollback"], RUNS["rollback"]["B"]
    expected = evaluate(CORPUS, case, run)
    # Entries that no case or run refers to are not checked on each call...
    corpus["Unused Key"] = ""
    assert evaluate(corpus, case, run) == expected
    # ...and a call does not walk the corpus: it executes the same lines as on the five-note corpus
    # (a Python loop over 100,005 entries would add as many), and allocates no copy of it (a list of
    # its keys alone takes 800 KB, a set 4 MB; the call itself allocates a few KB).
    small_lines, small_peak = _work(CORPUS, case, run)
    large_lines, large_peak = _work(corpus, case, run)
    assert large_lines == small_lines
    assert large_peak < small_peak + 64 * 1024, (small_peak, large_peak)


# --- graded relevance by hand ------------------------------------------------------------------

GRADED_CORPUS = {d: f"note {d}" for d in "abcdef"}
GRADED = {"relevant": {"a": 3, "b": 2, "c": 1, "d": 0, "e": -1}, "support": {"x": ("a",)}}
GRADED_RUN = {"retrieved": ("d", "b", "e", "a", "f"), "claims": (("x", ("a",)),)}


def _log2(n: int) -> float:
    return math.log(n, 2)


def test_ndcg_uses_grade_gain_zero_for_negative_and_ideal_from_all_labels():
    score = evaluate(GRADED_CORPUS, GRADED, GRADED_RUN, k=4)
    dcg = 0 / _log2(2) + 2 / _log2(3) + 0 / _log2(4) + 3 / _log2(5)  # d, b, e (grade -1 gains 0), a
    idcg = 3 / _log2(2) + 2 / _log2(3) + 1 / _log2(4) + 0 / _log2(5)  # a, b, c (never retrieved), d
    assert math.isclose(score["ndcg"], dcg / idcg, rel_tol=1e-12)
    # The ideal is cut at k: at k=1 it is a alone; the first document d gains nothing.
    assert evaluate(GRADED_CORPUS, GRADED, GRADED_RUN, k=1)["ndcg"] == 0.0
    perfect = {"retrieved": ("a", "b", "c"), "claims": ()}
    assert math.isclose(evaluate(GRADED_CORPUS, GRADED, perfect, k=3)["ndcg"], 1.0)


@pytest.mark.parametrize(
    "level, precision, recall, rr, ap, f1",
    [
        # level 1: relevant a, b, c; hits b@2, a@4 within k=4.
        (1, 2 / 4, 2 / 3, 1 / 2, (1 / 2 + 2 / 4) / 3, (2 * (2 / 4) * (2 / 3)) / (2 / 4 + 2 / 3)),
        # level 2: relevant a, b; the same two hits.
        (2, 2 / 4, 2 / 2, 1 / 2, (1 / 2 + 2 / 4) / 2, (2 * (2 / 4) * 1) / (2 / 4 + 1)),
        # level 3: relevant a only; one hit at rank 4.
        (3, 1 / 4, 1 / 1, 1 / 4, (1 / 4) / 1, (2 * (1 / 4) * 1) / (1 / 4 + 1)),
    ],
)
def test_binary_metrics_at_a_relevance_level(level, precision, recall, rr, ap, f1):
    score = evaluate(GRADED_CORPUS, GRADED, GRADED_RUN, k=4, level=level)
    expected = {"precision": precision, "recall": recall, "rr": rr, "ap": ap, "f1": f1, "success": 1.0}
    for key, value in expected.items():
        assert math.isclose(score[key], value, rel_tol=1e-12), key


def test_ap_counts_only_hits_within_the_cutoff_and_divides_by_all_relevant():
    # k=3: top d, b, e; one hit (b@2) of three relevant documents, as trec_eval's map_cut.
    score = evaluate(GRADED_CORPUS, GRADED, GRADED_RUN, k=3)
    assert math.isclose(score["ap"], (1 / 2) / 3)
    # k=5: a relevant document never retrieved (c) still counts in the denominator.
    score = evaluate(GRADED_CORPUS, GRADED, GRADED_RUN, k=5)
    assert math.isclose(score["ap"], (1 / 2 + 2 / 4) / 3)


def test_no_document_at_the_level_makes_retrieval_na_but_not_the_answer():
    score = evaluate(GRADED_CORPUS, GRADED, GRADED_RUN, k=4, level=4)
    for key in ("precision", "recall", "rr", "ndcg", "ap", "f1", "success"):
        assert score[key] is None, key
    assert (score["support"], score["coverage"], score["abstention_correct"]) == (1.0, 1.0, None)


def test_no_hit_scores_zero_everywhere():
    score = evaluate(GRADED_CORPUS, GRADED, {"retrieved": ("f", "d", "e"), "claims": ()}, k=3)
    for key in ("precision", "recall", "rr", "ndcg", "ap", "f1", "success"):
        assert score[key] == 0.0, key


def test_f1_and_success_on_the_seed():
    # rollback A at k=2: P = 1/2, R = 1/2 -> F1 = 1/2; owner A: P = 1/2, R = 1 -> F1 = 2/3.
    assert math.isclose(seed("rollback", "A")["f1"], 2 * (1 / 2) * (1 / 2) / (1 / 2 + 1 / 2))
    assert math.isclose(seed("owner", "A")["f1"], 2 * (1 / 2) * 1 / (1 / 2 + 1))
    assert seed("owner", "A")["success"] == 1.0
    assert evaluate(CORPUS, OWNER, owner_run(("archive", "launch")))["success"] == 0.0
    assert seed("region", "A")["success"] is None


def test_only_all_positive_grades_count_as_answerable():
    case = {"relevant": {"owners": 0, "archive": -2}, "support": {}}
    score = evaluate(CORPUS, case, {"retrieved": ("owners",), "claims": ()})
    assert score["recall"] is None and score["abstention_correct"] is True


# --- claim verdicts and their reasons ---------------------------------------------------------


@pytest.mark.parametrize(
    "retrieved, k, claim, reasons",
    [
        (("owners",), 2, ("aurora", ("owners",)), ()),
        (("owners",), 2, ("aurora", ()), ("no_citation",)),
        (("owners",), 2, ("bonus", ("owners",)), ("unlabelled_claim", "citation_not_supporting")),
        (("owners",), 2, ("bonus", ()), ("no_citation", "unlabelled_claim")),
        (("owners", "archive"), 2, ("aurora", ("archive",)), ("citation_not_supporting",)),
        (("owners", "archive"), 2, ("aurora", ("owners", "archive")), ("citation_not_supporting",)),
        (("archive", "owners"), 1, ("aurora", ("owners",)), ("citation_not_visible",)),
        ((), 2, ("aurora", ("owners",)), ("citation_not_visible",)),
        (("owners",), 2, ("aurora", ("ghost",)), ("citation_unknown",)),
        (("owners",), 2, ("aurora", ("owners", "ghost")), ("citation_unknown",)),
    ],
)
def test_claim_verdict_reasons(retrieved, k, claim, reasons):
    (verdict,) = claim_verdicts(CORPUS, OWNER, {"retrieved": retrieved, "claims": (claim,)}, k=k)
    assert (verdict.claim, verdict.citations) == claim
    assert verdict.reasons == reasons
    assert verdict.supported is (reasons == ())


def test_claim_verdicts_keep_answer_order():
    run = {"retrieved": ("launch",), "claims": (("bonus", ("launch",)), ("monday", ("launch",)))}
    verdicts = claim_verdicts(CORPUS, CASES["launch"], run)
    assert [(v.claim, v.supported) for v in verdicts] == [("bonus", False), ("monday", True)]


# --- permissions -------------------------------------------------------------------------------

HR_ONLY = {"owners": ("hr",)}


def test_restricted_citation_never_supports_and_is_a_disclosure():
    case = _case(caller=("staff",))
    run = owner_run(("owners",), ("aurora", ("owners",)))
    (verdict,) = claim_verdicts(CORPUS, case, run, access=HR_ONLY)
    assert verdict.reasons == ("citation_restricted",)
    score = evaluate(CORPUS, case, run, access=HR_ONLY)
    assert (score["support"], score["coverage"], score["disclosures"]) == (0.0, 0.0, 1)
    assert score["recall"] == 1.0  # retrieval itself is judged on relevance


def test_restricted_document_in_the_visible_top_k_is_a_disclosure_even_uncited():
    case = _case(caller=("staff",), relevant=("owners", "archive"), support={"aurora": ("archive",)})
    run = owner_run(("archive", "owners"), ("aurora", ("archive",)))
    score = evaluate(CORPUS, case, run, access=HR_ONLY, k=2)
    assert (score["support"], score["disclosures"]) == (1.0, 1)  # a right answer does not excuse it
    assert evaluate(CORPUS, case, run, access=HR_ONLY, k=1)["disclosures"] == 0  # ranked beyond k


def test_cited_restricted_document_outside_the_context_is_a_disclosure():
    case = _case(caller=("staff",))
    run = owner_run(("archive",), ("aurora", ("owners",)))
    (verdict,) = claim_verdicts(CORPUS, case, run, access=HR_ONLY)
    assert verdict.reasons == ("citation_not_visible", "citation_restricted")
    assert evaluate(CORPUS, case, run, access=HR_ONLY)["disclosures"] == 1


def test_disclosures_count_distinct_restricted_documents():
    access = {"owners": ("hr",), "archive": ("hr",), "launch": ("hr", "staff")}
    case = _case(caller=("staff",))
    run = owner_run(("owners", "archive"), ("aurora", ("owners", "launch")))
    assert evaluate(CORPUS, case, run, access=access)["disclosures"] == 2  # owners, archive; launch is shared


@pytest.mark.parametrize(
    "caller, access, disclosures, support",
    [
        (("staff",), {"owners": ("hr", "staff")}, 0, 1.0),  # a shared group grants access
        (("staff",), {"archive": ("hr",)}, 0, 1.0),  # documents without groups are public
        (None, HR_ONLY, 0, 1.0),  # no caller: nothing is restricted
        ((), HR_ONLY, 1, 0.0),  # a caller without groups sees only public documents
        (["hr"], HR_ONLY, 0, 1.0),
    ],
)
def test_access_groups_and_callers(caller, access, disclosures, support):
    case = _case() if caller is None else _case(caller=caller)
    score = evaluate(CORPUS, case, owner_run(("owners",), ("aurora", ("owners",))), access=access)
    assert (score["disclosures"], score["support"]) == (disclosures, support)


def test_without_access_data_results_equal_the_seed():
    for name, case in CASES.items():
        for system, run in RUNS[name].items():
            plain = evaluate(CORPUS, case, run)
            assert evaluate(CORPUS, case, run, access={}) == plain
            assert evaluate(CORPUS, case | {"caller": ("staff",)}, run) == plain
            assert plain["disclosures"] == 0


# --- recorded status: missing and failed records ------------------------------------------------


def _labels(name: str) -> Labels:
    case = CASES[name]
    return Labels({d: 1 for d in case["relevant"]}, {c: frozenset(d) for c, d in case["support"].items()})


def test_missing_and_failed_records_fail_every_answer_metric():
    out = Output(("rollback", "checklist"), (("switch", ("rollback",)), ("smoke", ("checklist",))))
    for status in ("missing", "failed"):
        score = score_question(_labels("rollback"), out, k=2, known=CORPUS, status=status)
        assert (score["precision"], score["recall"], score["rr"]) == (0.0, 0.0, 0.0), status
        assert (score["support"], score["coverage"], score["abstention_correct"]) == (0.0, 0.0, None), status
        region = score_question(_labels("region"), Output(), k=2, known=CORPUS, status=status)
        assert (region["support"], region["abstention_correct"], region["recall"]) == (0.0, False, None), status


def test_failed_record_still_discloses_what_it_showed():
    labels = Labels({"owners": 1}, {"aurora": frozenset({"owners"})}, caller=frozenset({"staff"}))
    out = Output(("owners",), (("aurora", ("archive",)),))
    access = {"owners": ("hr",), "archive": ("hr",)}
    failed = score_question(labels, out, k=2, known=CORPUS, access=access, status="failed")
    missing = score_question(labels, out, k=2, known=CORPUS, access=access, status="missing")
    assert (failed["disclosures"], missing["disclosures"]) == (2, 0)


def test_judged_at_k_by_hand():
    """Judged@k: documents within k that carry any label (0 included) over documents retrieved within k;
    n/a when nothing was retrieved; scored on an unanswerable question too; a later chunk of a counted
    document fills a slot but is no new document."""
    labels = Labels({"a": 0, "c": 2}, {"x": frozenset({"c"})})
    def judged(ranking, k):
        return score_question(labels, Output(ranking), k=k, known={"a", "b", "c"})["judged"]
    assert judged(("a", "b", "c"), 2) == 1 / 2  # a judged (grade 0), b not
    assert judged(("a", "b", "c"), 3) == 2 / 3
    assert judged(("b",), 3) == 0.0 and judged((), 3) is None
    assert judged(("c", None, "b"), 3) == 1 / 2  # the empty slot (a later chunk of c) is not counted
    unanswerable = Labels({"a": 0, "b": -1}, {})
    row = score_question(unanswerable, Output(("a", "c")), k=2, known={"a", "b", "c"})
    assert (row["judged"], row["recall"]) == (1 / 2, None)
    failed = score_question(labels, Output(("a",)), k=2, known={"a"}, status="failed")
    assert failed["judged"] is None  # the declared exception: a failure retrieved nothing

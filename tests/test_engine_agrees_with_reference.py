"""Two implementations, one truth: the reference and the SQL engine agree on random batches.

Each example is a whole batch (several questions x runs x cutoffs) so one DuckDB round trip
checks many cases. Inputs cover graded labels (0 and negative grades), short and empty rankings,
rankings longer than the cutoff with judged and unjudged documents on both sides of it (the condensed
lists of P'@k, nDCG'@k and AP'@k reach past k), unanswerable questions, claims with no, unknown,
mixed, hidden or restricted citations, access groups and callers (including none), and ok / missing /
failed records.
"""
from __future__ import annotations

import math
from dataclasses import replace

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seed_fixture import CASES, CORPUS, EXPECTED_TABLE, RUNS
from fixtures import display, engine_rows, engine_scores
from tiers import examples

from scoring import REGISTRY
from scoring.metrics.registry import SUPPORT_GRADES
from scoring.metrics.reference import Labels, Output, judge_claims, restricted_docs, score_question, validate
from scoring.metrics.engine import WHOLE_RANKING

DOCS = tuple(f"d{i}" for i in range(14))
GROUPS = ("hr", "ops", "staff")
EXTRA_CLAIMS = ("extra", "other")
SEED_KEYS = ("precision", "recall", "rr", "support", "coverage", "abstention_correct")
COUNTS = ("n_claims", "n_supported", "n_expected", "n_expected_supported", "n_relevant", "n_hits", "n_judged", "n_retrieved",
          "n_supported_graded", "n_expected_supported_graded", "k")
CUTOFFS = st.one_of(st.integers(1, 12), st.just(WHOLE_RANKING))


def _subset(draw, pool, *, min_size=0, max_size=None):
    return tuple(draw(st.lists(st.sampled_from(pool), unique=True, min_size=min_size, max_size=max_size)))


def _support(draw, positive):
    """An expected claim's supporting documents: a list (each full) or, half the time, a graded map
    document -> none | partial | full with at least one document partial or full."""
    docs = _subset(draw, positive, min_size=1, max_size=3)
    if draw(st.booleans()):
        return docs[:2]
    grades = {d: draw(st.sampled_from(SUPPORT_GRADES)) for d in docs}
    if all(g == "none" for g in grades.values()):
        grades[docs[0]] = draw(st.sampled_from(("partial", "full")))
    return grades


@st.composite
def batches(draw, max_questions=10, max_runs=3, permissions=False):
    """corpus, access, cases, outputs, statuses, cutoffs and level for one engine round trip.
    `permissions` always grants groups to some documents and usually names a caller."""
    docs = DOCS[: draw(st.integers(2, len(DOCS)))]
    corpus = {d: f"note {d}" for d in docs}
    restricted_docs = _subset(draw, docs, min_size=1) if permissions or draw(st.booleans()) else ()
    access = {d: _subset(draw, GROUPS, min_size=1, max_size=2) for d in restricted_docs}
    cases = {}
    retrieval_only = draw(st.integers(0, 5)) == 0  # a suite without expected claims (e.g. imported from TREC)
    for q in range(draw(st.integers(min(3, max_questions), max_questions))):
        labelled = _subset(draw, docs, min_size=0 if draw(st.integers(0, 3)) == 0 else 1, max_size=6)
        grades = {d: draw(st.sampled_from((-1, 0, 1, 1, 2, 3))) for d in labelled}
        positive = [d for d, g in grades.items() if g > 0]
        support = {
            f"c{i}": _support(draw, positive)
            for i in range(draw(st.integers(1, 3)) if positive and not retrieval_only and draw(st.integers(0, 5))
                           else 0)
        }
        binary = draw(st.booleans()) and all(g == 1 for g in grades.values())
        case = {"relevant": tuple(grades) if binary else grades, "support": support}
        callers = st.lists(st.sampled_from(GROUPS), unique=True, max_size=2)
        caller = draw(callers if permissions and draw(st.integers(0, 3)) else st.one_of(st.none(), callers))
        if caller is not None:
            case["caller"] = tuple(caller)
        cases[f"q{q}"] = case
    outputs, statuses = {}, {}
    for run in (f"r{i}" for i in range(draw(st.integers(min(2, max_runs), max_runs)))):
        for q, case in cases.items():
            retrieved = tuple(draw(st.permutations(docs))[: draw(st.integers(0, min(12, len(docs))))])
            claims = []
            made = [c for c in case["support"] if draw(st.integers(0, 2))]
            for claim in made + [c for c in EXTRA_CLAIMS if not draw(st.integers(0, 2))]:
                good = list(case["support"].get(claim, ()))
                cited = _subset(draw, good, min_size=1 if draw(st.integers(0, 4)) else 0) if good else ()
                if not good or not draw(st.integers(0, 2)):
                    cited += _subset(draw, (*docs, "ghost"), max_size=2)
                claims.append((claim, tuple(dict.fromkeys(cited))))
            outputs[(run, q)] = {"retrieved": retrieved, "claims": tuple(claims)}
            statuses[(run, q)] = draw(st.sampled_from(("ok", "ok", "ok", "missing", "failed")))
    cutoffs = tuple(draw(st.lists(CUTOFFS, unique=True, min_size=1, max_size=3)))
    level = draw(st.integers(1, 3))
    max_claims = draw(st.sampled_from((None, len(EXTRA_CLAIMS) + 3, 100)))
    return corpus, access, cases, outputs, statuses, cutoffs, level, max_claims


def _same(reference, sql) -> bool:
    """Equal as the contract means it: n/a only matches n/a, bools match bools, rates within 1e-9."""
    if reference is None or sql is None:
        return reference is None and sql is None
    if isinstance(reference, bool) or isinstance(sql, bool):
        return type(reference) is type(sql) and reference == sql
    return math.isclose(float(reference), float(sql), rel_tol=0, abs_tol=1e-9)


def _labels(corpus, case, out, level) -> tuple[Labels, Output]:
    """The seed's validation, and a suite's answers asked; an answerable question without expected
    claims (which the seed refuses, a workspace allows) is read as it is."""
    grades = _grades(case)
    if any(g > 0 for g in grades.values()) and not case["support"]:
        caller = case.get("caller")
        return (Labels(dict(grades), {}, None if caller is None else frozenset(caller)),
                Output(tuple(out["retrieved"]), tuple((c, tuple(cs)) for c, cs in out["claims"])))
    # The cutoff is validated by evaluate (1..100); WHOLE_RANKING lies beyond it, so check once at 1.
    return validate(corpus, case, out, 1, level)


def _reference(corpus, access, cases, outputs, statuses, cutoffs, level, max_claims=None):
    """Scores and verdicts keyed like `engine_scores(..., by_cutoff=True)`."""
    scores, verdicts = {}, {}
    asked = any(case["support"] for case in cases.values())
    for (run, q), out in outputs.items():
        labels, output = _labels(corpus, cases[q], out, level)
        labels = replace(labels, answers_asked=asked)
        for k in cutoffs:
            scores[(run, q, k)] = score_question(
                labels, output, k=k, level=level, known=corpus, access=access, status=statuses[(run, q)],
                **({} if max_claims is None else {"max_claims": max_claims}),
            )
            if statuses[(run, q)] == "ok":
                # Rankings here are at most 14 long, so a cutoff of 100 shows all of them.
                shown = set(output.retrieved[:k]) | {d for _, cites in output.claims for d in cites}
                restricted = restricted_docs(shown, labels.caller, access)
                for v in judge_claims(labels, output, k=k, known=corpus, restricted=restricted):
                    verdicts[(run, q, k, v.claim)] = (v.citations, v.reasons)
    return scores, verdicts


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("SET threads = 1")  # small batches: one thread is faster and leaves a core free
    yield con
    con.close()


def _check(batch, con, case_tally, name: str, *, trim: bool = False) -> None:
    """`trim`: hand the engine, past the largest cutoff, only the judged slots (as a workspace does)."""
    corpus, access, cases, outputs, statuses, cutoffs, level, *rest = batch
    max_claims = rest[0] if rest else None
    expected, expected_verdicts = _reference(*batch)
    rows = engine_rows(corpus, cases, outputs, k=cutoffs, access=access, statuses=statuses, max_claims=max_claims)
    if trim:
        rows["eval_retrieved"] = [(run, q, rank, doc) for run, q, rank, doc in rows["eval_retrieved"]
                                  if rank <= max(cutoffs) or doc in _grades(cases[q])]
    got, got_verdicts = engine_scores(rows, level=level, by_cutoff=True, con=con)
    assert set(got) == set(expected)
    for key, ref in expected.items():
        for column in (*(m.key for m in REGISTRY), *COUNTS):
            assert _same(ref[column], got[key][column]), (key, column, ref[column], got[key][column])
        assert got[key]["status"] == statuses[key[:2]]
        assert got[key]["answerable"] == any(g > 0 for g in _grades(cases[key[1]]).values())
    assert got_verdicts == expected_verdicts
    case_tally[name] = case_tally.get(name, 0) + len(expected)


def _grades(case) -> dict:
    rel = case["relevant"]
    return rel if isinstance(rel, dict) else {d: 1 for d in rel}


def test_engine_reproduces_the_seed_by_hand(duck):
    """The SQL engine alone against the seed's hand-worked values, at k=2 and k=1 in one batch."""
    outputs = {(system, q): RUNS[q][system] for q in CASES for system in RUNS[q]}
    for name, citations in (("none", ()), ("unknown", ("unknown",)), ("mixed", ("owners", "archive"))):
        outputs[(name, "owner")] = {"retrieved": ("owners", "archive"), "claims": (("aurora", citations),)}
    scores, verdicts = engine_scores(engine_rows(CORPUS, CASES, outputs, k=(2, 1)), by_cutoff=True, con=duck)
    lines = ["case system | P@2 R@2 RR@2 support coverage abstention"]
    for q in CASES:
        for system in RUNS[q]:
            row = scores[(system, q, 2)]
            lines.append(f"{q} {system} | " + " ".join(display(row[key]) for key in SEED_KEYS))
    assert "\n".join(lines) + "\n" == EXPECTED_TABLE
    # The visible context is the first k: at k=1 rollback B's smoke cites the hidden checklist.
    assert (scores[("B", "rollback", 1)]["support"], scores[("B", "rollback", 1)]["coverage"]) == (0.5, 0.5)
    assert verdicts[("B", "rollback", 1, "smoke")] == (("checklist",), ("citation_not_visible",))
    assert verdicts[("B", "rollback", 2, "smoke")] == (("checklist",), ())
    # Every citation must support: none, unknown and mixed citations all fail.
    for name in ("none", "unknown", "mixed"):
        assert (scores[(name, "owner", 2)]["support"], scores[(name, "owner", 2)]["coverage"]) == (0.0, 0.0), name
    assert verdicts[("mixed", "owner", 2, "aurora")] == (("owners", "archive"), ("citation_not_supporting",))
    assert scores[("A", "rollback", 2)]["precision"] == 1 / 2  # one hit over k=2 slots, not over 1 returned


# Each example is one round trip; the profile's budget is shared out between the three tests.
SHARE = max(1, settings.default.max_examples // 3)


@settings(max_examples=2 * SHARE)
@given(batches())
def test_reference_and_engine_agree_on_random_batches(duck, case_tally, batch):
    _check(batch, duck, case_tally, "random batches")


@settings(max_examples=SHARE)
@given(batches(permissions=True))
def test_reference_and_engine_agree_under_access_control(duck, case_tally, batch):
    _check(batch, duck, case_tally, "access control")


@settings(max_examples=examples(30))
@given(batches())
def test_unjudged_slots_past_every_cutoff_can_be_left_out(duck, case_tally, batch):
    """A workspace hands the engine every slot within k and only the judged ones past it (`eval_retrieved`):
    a condensed list (P'@k, nDCG'@k, AP'@k) reaches past k for judged documents only, every other metric
    stops at k, so the figures are the whole ranking's."""
    _check(batch, duck, case_tally, "judged slots only past k", trim=True)


@settings(max_examples=SHARE)
@given(
    st.lists(st.integers(1, 12), unique=True, min_size=1, max_size=3),
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(DOCS[:6]), unique=True, max_size=8),
            st.sampled_from(("ok", "missing", "failed")),
            st.sampled_from(("ok", "missing", "failed")),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_empty_and_unanswerable_questions_agree(duck, case_tally, cutoffs, variants):
    """Unanswerable questions (only 0 and negative grades, or no label), answered or declined,
    by runs that retrieve something, nothing, or have no usable record; in a suite that asks for
    answers (one question has expected claims) and in one that does not."""
    for asked in (True, False):
        _check_unanswerable(duck, case_tally, cutoffs, variants, asked)


def _check_unanswerable(duck, case_tally, cutoffs, variants, asked: bool) -> None:
    corpus = {d: f"note {d}" for d in DOCS[:6]}
    cases, outputs, statuses = {}, {}, {}
    if asked:
        cases["ask"] = {"relevant": ("d2",), "support": {"c": ("d2",)}}
        outputs[("r0", "ask")] = outputs[("r1", "ask")] = {"retrieved": ("d2",), "claims": (("c", ("d2",)),)}
        statuses |= {("r0", "ask"): "ok", ("r1", "ask"): "failed"}
    for i, (retrieved, declined, guessed) in enumerate(variants):
        cases[f"none{i}"] = {"relevant": {"d0": 0, "d1": -1}, "support": {}}
        cases[f"open{i}"] = {"relevant": (), "support": {}}
        outputs[("r0", f"none{i}")] = {"retrieved": tuple(retrieved), "claims": ()}
        outputs[("r0", f"open{i}")] = {"retrieved": tuple(retrieved), "claims": (("guess", ("d0",)),)}
        outputs[("r1", f"none{i}")] = outputs[("r1", f"open{i}")] = {"retrieved": (), "claims": ()}
        statuses |= {("r0", f"none{i}"): declined, ("r0", f"open{i}"): guessed}
        statuses |= {("r1", f"none{i}"): "ok", ("r1", f"open{i}"): "ok"}
    _check((corpus, {}, cases, outputs, statuses, tuple(cutoffs), 1), duck, case_tally, "empty and unanswerable")

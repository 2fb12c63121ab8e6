"""The metric registry: every metric declared once.

The SQL engine, the reference implementation, the CLI, the dashboard and the README all read
these declarations; none of them restates a definition. A new metric is one entry here plus its
kernel in `contract` (reference) and in `engine` (SQL).

Measure strings follow ir_measures: ``P@5``, ``nDCG@20``, ``RR``, ``AP@10``, ``Bpref``. The seed's keys
(``precision``, ``recall``, ``rr``, ``support``, ``coverage``, ``abstention_correct``) are aliases. A
condensed-list metric is written with Sakai's prime (``P'@5``, ``nDCG'@10``, ``AP'``); ir_measures'
spelling of the same measure, ``P(judged_only=True)@5``, parses to it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..errors import ValidationError, invalid

Level = Literal["retrieval", "answer"]
Cutoff = Literal["required", "optional", "none"]
Value = Literal["rate", "flag", "count"]


@dataclass(frozen=True)
class Metric:
    """One metric's contract. `key` is its column in `question_scores`."""

    key: str
    family: str
    level: Level
    cutoff: Cutoff
    numerator: str
    denominator: str
    na_rule: str
    higher_is_better: bool
    pooled: tuple[str, str] | None
    help: str
    failure: str = ""
    """How a failed or missing record enters the numerator and the denominator, in words."""
    aliases: tuple[str, ...] = ()
    value: Value = "rate"
    """rate: a number in [0, 1]; flag: true/false per question (its mean is a rate); count: a whole number."""
    failures_never_help: bool = True
    """Turning successful records into failed or missing ones never moves this metric (per question
    and in every aggregate) in its better direction, nor turns a value into n/a. Property-tested;
    an exception is declared here and says why in `failure`."""
    graded: bool = False
    """Gains are the labelled grades: the relevance level decides only when the metric is n/a, not its
    value (trec_eval's ndcg_cut ignores -l)."""
    relevance_required: bool = False
    """n/a on a question with no relevant document at the relevance level (`RETRIEVAL_NA`)."""
    judged_only: bool = False
    """Scored over the judged documents only (`JUDGED_RULE`): a document without a label for the question
    leaves the ranking (the condensed list) or is passed over (bpref) instead of counting as not
    relevant, so the judged non-relevant documents count as well as the relevant ones."""
    condenses: str | None = None
    """The key of the standard metric this one is the condensed-list version of (Sakai 2007): the same
    formula over the ranking with its unjudged documents removed before the cut at k."""
    lenient_of: str | None = None
    """The key of the strict answer metric this one is the graded (lenient) version of: the same n/a and
    failure rules, but a claim whose citations all at least partly support it counts `PARTIAL_WEIGHT`."""

    @property
    def name(self) -> str:
        """Name as shown beside stored scores, which are at the run's cutoff k: ``P@k``, ``RR@k``,
        ``Support``. Measure strings without a cutoff (``RR``, ``AP``) mean the whole ranking."""
        return self.family if self.cutoff == "none" else f"{self.family}@k"

    @property
    def pooling(self) -> str:
        """How the metric pools across questions, in words."""
        if self.pooled is None:
            return "mean over scored questions (pooling equals the macro mean)"
        num, den = self.pooled
        return f"sum of {num} / sum of {den}"


RETRIEVAL_NA = "n/a when the question has no relevant document (unanswerable at this relevance level)"
RETRIEVAL_FAILURE = "scores 0 (nothing retrieved) on a question it scores; n/a stays n/a"
ASKS_ANSWER = ("A question asks for an answer when it has expected or assessed claims, or when it is unanswerable "
               "in a suite that has either (the right answer is then an abstention). A retrieval-only suite (no "
               "expected or assessed claim anywhere, e.g. imported from TREC without support assessments) asks "
               "for none.")
"""When the answer metrics (Support, Coverage, Abstention, FalseAbstention) are defined at all."""
CHUNK_RANKS = (" A retrieved chunk stands for its document, counted once at the slot of its first chunk; ranks are "
               "slots (docs/formats.md, Chunks).")
JUDGED_RULE = ("A document is judged when it carries a label for the question (any grade, 0 and negative "
               "included: the documents Judged@k counts).")
CONDENSED_LIST = ("the condensed list (the ranking with its unjudged documents removed, Sakai 2007; its first k "
                  "may reach past the k-th slot)")
SUPPORT_GRADES: tuple[str, ...] = ("none", "partial", "full")
"""The levels of a support label on a (claim, document) pair, weakest first (TREC 2024 RAG's support
levels 0, 1, 2). A list of supporting documents means "full" for each; an unlisted document is "none"."""
SUPPORT_LEVEL: dict[str, int] = {grade: level for level, grade in enumerate(SUPPORT_GRADES)}
"""A support grade as an ordered level: none 0, partial 1, full 2 (what weighted kappa and "the better
of two grades" compare)."""
PARTIAL_WEIGHT = 0.5
"""What a generated claim counts in the graded answer metrics when every citation supports it at least
partly and one or more only partly (a fully supported claim counts 1, any other 0)."""
GRADED_RULE = (f" Graded: a claim whose citations are all visible, known, not restricted and labelled as at "
               f"least partly supporting it counts {PARTIAL_WEIGHT} when any of them is only partial, 1 when "
               "all are full, else 0.")
CHUNK_CITATIONS = (" Citations may name chunks or documents: a claim is judged on the set of documents it cites "
                   "(docs/formats.md, Chunks).")

REGISTRY: tuple[Metric, ...] = (
    Metric(
        key="precision",
        family="P",
        level="retrieval",
        cutoff="required",
        numerator="relevant documents among the first k retrieved",
        denominator="k, even when fewer than k documents were retrieved",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=("n_hits", "k"),
        help="Share of the k context slots filled with relevant documents." + CHUNK_RANKS,
        aliases=("precision",),
    ),
    Metric(
        key="recall",
        family="R",
        level="retrieval",
        cutoff="required",
        numerator="relevant documents among the first k retrieved",
        denominator="relevant documents labelled for the question",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=("n_hits", "n_relevant"),
        help="Share of the labelled relevant documents that reached the first k." + CHUNK_RANKS,
        aliases=("recall",),
    ),
    Metric(
        key="rr",
        family="RR",
        level="retrieval",
        cutoff="optional",
        numerator="1",
        denominator="rank of the first relevant document within the cutoff (0 when there is none)",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="How early the first relevant document appears; without a cutoff the whole ranking counts." + CHUNK_RANKS,
        aliases=("rr", "mrr", "recip_rank"),
    ),
    Metric(
        key="ndcg",
        family="nDCG",
        level="retrieval",
        cutoff="required",
        numerator="DCG of the first k: grade (negative grades gain 0) / log2(rank + 1)",
        denominator="DCG of the ideal ranking of every labelled document, cut at k",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="Graded gain of the first k, discounted by rank, relative to the best possible ranking." + CHUNK_RANKS,
        aliases=("ndcg",),
        graded=True,
    ),
    Metric(
        key="ap",
        family="AP",
        level="retrieval",
        cutoff="optional",
        numerator="sum of precision at the rank of each relevant document retrieved within the cutoff",
        denominator="relevant documents labelled for the question",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="Average precision as trec_eval's map; with a cutoff, as its map_cut." + CHUNK_RANKS,
        aliases=("ap", "map"),
    ),
    Metric(
        key="f1",
        family="F1",
        level="retrieval",
        cutoff="required",
        numerator="2 x P@k x R@k",
        denominator="P@k + R@k (0 when both are 0)",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="Harmonic mean of P@k and R@k." + CHUNK_RANKS,
        aliases=("f1",),
    ),
    Metric(
        key="success",
        family="Success",
        level="retrieval",
        cutoff="required",
        numerator="1 when at least one relevant document is among the first k, else 0",
        denominator="1 per question",
        na_rule=RETRIEVAL_NA,
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="Whether any relevant evidence reached the first k." + CHUNK_RANKS,
        aliases=("success",),
    ),
    Metric(
        key="judged",
        family="Judged",
        level="retrieval",
        cutoff="required",
        numerator="documents among the first k retrieved that carry a label for the question (any grade, 0 "
        "included)",
        denominator="documents retrieved within the first k",
        na_rule="n/a when nothing was retrieved within k; scored on unanswerable questions too",
        failure="n/a: a failed or missing record retrieved nothing. Judged@k measures how far the labels reach "
        "into a ranking, not the system, so it is the other declared exception: a failure can turn it n/a",
        failures_never_help=False,
        higher_is_better=True,
        pooled=("n_judged", "n_retrieved"),
        help="Share of the first k documents that reviewers judged. Unjudged documents count as not relevant, "
        "so a low value means part of a comparison may rest on label gaps (judge them: ragslice pool)."
        + CHUNK_RANKS,
        aliases=("judged",),
    ),
    Metric(
        key="precision_condensed",
        family="P'",
        level="retrieval",
        cutoff="required",
        numerator="relevant documents among the first k of " + CONDENSED_LIST,
        denominator="k, even when fewer than k judged documents were retrieved",
        na_rule=RETRIEVAL_NA + ", as P@k's; never 0",
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="P@k over the judged documents only: an unjudged document leaves the ranking instead of counting "
        "as not relevant, so label gaps do not lower it; as trec_eval -J's P_k and ir_measures' "
        "P(judged_only=True)@k. Read it beside P@k where Judged@k is low. " + JUDGED_RULE + CHUNK_RANKS,
        aliases=("precision_condensed",),
        judged_only=True,
        condenses="precision",
    ),
    Metric(
        key="ndcg_condensed",
        family="nDCG'",
        level="retrieval",
        cutoff="required",
        numerator="DCG of the first k of " + CONDENSED_LIST + ": grade (negative grades gain 0) / log2(rank in "
        "that list + 1)",
        denominator="DCG of the ideal ranking of every labelled document, cut at k (nDCG@k's)",
        na_rule=RETRIEVAL_NA + ", as nDCG@k's; never 0",
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="nDCG@k over the judged documents only (an unjudged document leaves the ranking instead of gaining "
        "0 in its slot); as trec_eval -J's ndcg_cut_k and ir_measures' nDCG(judged_only=True)@k. "
        + JUDGED_RULE + CHUNK_RANKS,
        aliases=("ndcg_condensed",),
        graded=True,
        judged_only=True,
        condenses="ndcg",
    ),
    Metric(
        key="ap_condensed",
        family="AP'",
        level="retrieval",
        cutoff="optional",
        numerator="sum of precision at the rank, in " + CONDENSED_LIST + ", of each relevant document among its "
        "first k (the whole list without a cutoff)",
        denominator="relevant documents labelled for the question",
        na_rule=RETRIEVAL_NA + ", as AP's; never 0",
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="Average precision over the judged documents only; as trec_eval -J's map (map_cut_k with a cutoff) "
        "and ir_measures' AP(judged_only=True). " + JUDGED_RULE + CHUNK_RANKS,
        aliases=("ap_condensed",),
        judged_only=True,
        condenses="ap",
    ),
    Metric(
        key="bpref",
        family="Bpref",
        level="retrieval",
        cutoff="optional",
        numerator="sum, over each relevant document retrieved within the cutoff, of 1 - min(n, R) / min(R, N), "
        "where n counts the judged non-relevant documents ranked above it (the term is 1 when n is 0); unjudged "
        "documents are passed over",
        denominator="R: relevant documents labelled for the question (N: documents labelled for it below the "
        "relevance level, 0 and negative grades included)",
        na_rule=RETRIEVAL_NA + ", R = 0; never 0, where trec_eval prints 0",
        relevance_required=True,
        failure=RETRIEVAL_FAILURE,
        higher_is_better=True,
        pooled=None,
        help="Binary preference (Buckley & Voorhees 2004), trec_eval's bpref: how far the relevant documents "
        "retrieved rank above the judged non-relevant ones; unjudged documents neither help nor hurt. Without "
        "a cutoff the whole ranking counts. " + JUDGED_RULE + CHUNK_RANKS,
        aliases=("bpref",),
        judged_only=True,
    ),
    Metric(
        key="support",
        family="Support",
        level="answer",
        cutoff="none",
        numerator="supported generated claims (>= 1 citation, every citation labelled for that claim, "
        "inside the first k and not restricted for the caller)",
        denominator="generated claims",
        na_rule="n/a when the answer makes no claim (an abstention), or the question asks for no answer",
        failure="scores 0; pooled, counts as unsupported generated claims, as many as the suite's max_claims "
        "(the most an answer may make), so no failure can raise pooled Support",
        higher_is_better=True,
        pooled=("n_supported", "n_claims"),
        help="Share of the answer's claims backed by visible, correctly cited evidence." + CHUNK_CITATIONS,
        aliases=("support",),
    ),
    Metric(
        key="coverage",
        family="Coverage",
        level="answer",
        cutoff="none",
        numerator="expected claims that the answer makes and supports",
        denominator="expected claims labelled for the question",
        na_rule="n/a when the question has no expected claim (unanswerable, or retrieval-only)",
        failure="scores 0: none of its expected claims is supported, and they stay in the denominator",
        higher_is_better=True,
        pooled=("n_expected_supported", "n_expected"),
        help="Share of the reviewed propositions the answer states with valid support." + CHUNK_CITATIONS,
        aliases=("coverage",),
    ),
    Metric(
        key="support_graded",
        family="GradedSupport",
        level="answer",
        cutoff="none",
        numerator=f"generated claims, each weighted: 1 when supported (as Support), {PARTIAL_WEIGHT} when every "
        "citation is visible, known, not restricted and labelled at least partial for that claim and one or more "
        "only partial, else 0",
        denominator="generated claims",
        na_rule="n/a as Support: when the answer makes no claim (an abstention), or the question asks for no answer",
        failure="as Support: scores 0; pooled, counts as unsupported generated claims, as many as the suite's "
        "max_claims, so no failure can raise pooled graded Support",
        higher_is_better=True,
        pooled=("n_supported_graded", "n_claims"),
        help="Support that gives partial credit to a claim backed only in part by its citations (a policy that "
        "states one of the claim's two clauses); read it beside Support, which it never falls below."
        + GRADED_RULE + CHUNK_CITATIONS,
        aliases=("support_graded", "graded_support"),
        lenient_of="support",
    ),
    Metric(
        key="coverage_graded",
        family="GradedCoverage",
        level="answer",
        cutoff="none",
        numerator=f"expected claims that the answer makes, each weighted as in graded Support (1 supported, "
        f"{PARTIAL_WEIGHT} at least partly supported by every citation, else 0)",
        denominator="expected claims labelled for the question",
        na_rule="n/a as Coverage: when the question has no expected claim (unanswerable, or retrieval-only)",
        failure="as Coverage: scores 0, its expected claims stay in the denominator",
        higher_is_better=True,
        pooled=("n_expected_supported_graded", "n_expected"),
        help="Coverage that gives partial credit to an expected claim the answer backs only in part; read it "
        "beside Coverage, which it never falls below." + GRADED_RULE + CHUNK_CITATIONS,
        aliases=("coverage_graded", "graded_coverage"),
        lenient_of="coverage",
    ),
    Metric(
        key="abstention_correct",
        family="Abstention",
        level="answer",
        cutoff="none",
        numerator="unanswerable questions answered with no claim by a successful record",
        denominator="unanswerable questions that ask for an answer",
        na_rule="n/a on answerable questions, and on every question of a suite without expected or assessed claims",
        failure="counts as no abstention (0)",
        higher_is_better=True,
        pooled=None,
        help="Whether the system declined, with an empty claim list, a question the corpus cannot answer.",
        aliases=("abstention_correct", "abstention"),
        value="flag",
    ),
    Metric(
        key="false_abstention",
        family="FalseAbstention",
        level="answer",
        cutoff="none",
        numerator="answerable questions without a successful answer: the record makes no claim, or is missing or "
        "failed",
        denominator="answerable questions that ask for an answer (with expected or assessed claims)",
        na_rule="n/a on unanswerable questions and on answerable questions without expected or assessed claims",
        failure="counts as not answered (1): an answerable question without a successful answer",
        higher_is_better=False,
        pooled=None,
        help="Whether the system left unanswered a question the corpus can answer: declined it (safe, but no "
        "help), or failed.",
        aliases=("false_abstention",),
        value="flag",
    ),
    Metric(
        key="disclosures",
        family="Disclosures",
        level="answer",
        cutoff="none",
        numerator="documents restricted for the caller that are inside the first k or cited",
        denominator="1 per question (a count, not a rate)",
        na_rule="never n/a: 0 when nothing restricted was shown or cited",
        failure="counts the restricted documents that its recorded ranking and citations show, none when it "
        "recorded nothing: the one measure a failure can lower, since a failed request shows nothing; the "
        "failure-rate gate answers for failures",
        failures_never_help=False,
        higher_is_better=False,
        pooled=None,
        help="Restricted documents put in front of a caller who may not see them.",
        aliases=("disclosures",),
        value="count",
    ),
)

BY_KEY: dict[str, Metric] = {m.key: m for m in REGISTRY}
RETRIEVAL_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.level == "retrieval")
RANKING_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.relevance_required and not m.judged_only)
"""The retrieval metrics judged against the relevant documents alone (n/a without one): a ranking that holds
only the relevant documents, at their ranks, scores them as the whole ranking does."""
JUDGED_ONLY_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.judged_only)
"""The retrieval metrics scored over the judged documents only (condensed lists, bpref; n/a without a
relevant document): they need every judged document of the ranking, the non-relevant ones too. With
`RANKING_KEYS`, what TREC files score."""
LENIENT: dict[str, Metric] = {m.lenient_of: m for m in REGISTRY if m.lenient_of}
"""Strict answer metric key -> its graded twin (``Support`` -> ``GradedSupport``)."""
CONDENSED: dict[str, Metric] = {m.condenses: m for m in REGISTRY if m.condenses}
"""Standard metric key -> its condensed-list twin (``P@k`` -> ``P'@k``)."""
ANSWER_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.level == "answer")
COUNT_KEYS: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.value == "count")
"""Metrics that count per question, so that a total over a slice means something."""
SEED_KEYS: tuple[str, ...] = ("precision", "recall", "rr", "support", "coverage", "abstention_correct")
"""The grounded-test-set seed's six keys, in its order: `evaluate` returns them first, `ragslice table`
prints them."""
assert set(SEED_KEYS) <= set(BY_KEY)
assert all(m.relevance_required and m.level == "retrieval" for m in REGISTRY if m.judged_only)
assert all(key in BY_KEY and BY_KEY[key].cutoff == BY_KEY[twin.key].cutoff for key, twin in CONDENSED.items())
assert all(BY_KEY[key].level == "answer" and BY_KEY[key].higher_is_better for key in LENIENT)
assert 0 < PARTIAL_WEIGHT < 1


# --- operational measures --------------------------------------------------------------------------


@dataclass(frozen=True)
class Operational:
    """A measure of how the run operated rather than of its answers, taken over its records (every
    repeat); lower is better for each. `aggregates` lists how it may be aggregated, the default first."""

    name: str
    unit: str
    aggregates: tuple[str, ...]
    help: str
    aliases: tuple[str, ...] = ()

    @property
    def default_aggregate(self) -> str:
        return self.aggregates[0]

    higher_is_better = False


OPERATIONAL: dict[str, Operational] = {
    o.name: o
    for o in (
        Operational("failure_rate", "share", ("rate",),
                    "share of the slice's questions whose record is missing or failed (per run, mean over repeats)",
                    ("failures", "failure")),
        Operational("latency", "ms", ("p95", "p50", "p99", "mean", "max"),
                    "latency_ms of the slice's records (every repeat; records without latency left out); "
                    "percentiles by linear interpolation. In a gate, a failed or missing record's latency is "
                    "unknown: it counts from 0 up to the policy's latency_budget_ms (unbounded without one)",
                    ("latency_ms", "latency_p95", "p95_latency")),
        Operational("cost", "USD", ("mean", "total"),
                    "cost_usd: mean per record, or total per pass over the slice (mean over repeats); "
                    "records without cost left out. In a gate, a failed or missing record's cost is unknown: it "
                    "counts from 0 up to the policy's cost_budget_usd (unbounded without one)", ("cost_usd",)),
    )
}
"""Failure rate, latency and cost: what a policy gates besides the registry's metrics."""

_LOOKUP: dict[str, Metric] = {}
for _m in REGISTRY:
    for _name in (_m.family, _m.key, *_m.aliases):
        _LOOKUP[_name.lower()] = _m
_OPERATIONAL_LOOKUP: dict[str, str] = {alias: o.name for o in OPERATIONAL.values() for alias in (o.name, *o.aliases)}

# trec_eval's own measure names, so `-m P_10` and `-m P.10` work as `-m P@10`.
_TREC_NAMES = {"p": "P", "recall": "R", "ndcg_cut": "nDCG", "map_cut": "AP", "success": "Success"}
_TREC_PLAIN = {"recip_rank": "RR", "map": "AP"}


def metric(name: str) -> Metric:
    """The registry entry for a canonical name, family or alias (case-insensitive)."""
    found = _LOOKUP.get(name.strip().lower().removesuffix("@k"))
    if found is None:
        known = ", ".join(m.name for m in REGISTRY)
        raise invalid(f"unknown metric; known metrics: {known} (or their seed aliases)", "metric", name)
    return found


def operational(name: str) -> Operational | None:
    """The operational measure a name or alias means (case-insensitive), None when it names none."""
    found = _OPERATIONAL_LOOKUP.get(name.strip().lower())
    return None if found is None else OPERATIONAL[found]


def measure_key(name: str) -> str:
    """The `question_scores` column of a registry metric, or the name of an operational measure, that
    a name or alias means; ValidationError naming every known one otherwise."""
    found = operational(name)
    if found is not None:
        return found.name
    try:
        return metric(name).key
    except ValidationError:
        known = ", ".join([*(m.name for m in REGISTRY), *OPERATIONAL])
        raise invalid(f"unknown metric; known: {known} (or their seed aliases)", "metric", name) from None


def display_name(key: str) -> str:
    """What a registry key or operational measure is called on screen: ``P@k``, ``Support``, ``latency``."""
    return key if key in OPERATIONAL else BY_KEY[key].name


def higher_is_better(key: str) -> bool:
    """The direction of a registry key or operational measure."""
    return False if key in OPERATIONAL else BY_KEY[key].higher_is_better


# --- measures: a metric at a cutoff and a relevance level ------------------------------------------


@dataclass(frozen=True)
class Measure:
    """A metric at a cutoff and a relevance level, written as ir_measures writes it: ``P@10``, ``RR``
    (cutoff None: the whole ranking), ``P(rel=2)@5`` (documents graded 2 or more count as relevant;
    level None: the level the caller scores at, 1 unless told otherwise)."""

    metric: Metric
    cutoff: int | None
    level: int | None = None

    def __str__(self) -> str:
        name = self.metric.family if self.level is None else f"{self.metric.family}(rel={self.level})"
        return name if self.cutoff is None else f"{name}@{self.cutoff}"


_MEASURE = re.compile(r"(?P<name>[^(@]*?)\s*(?:\((?P<params>[^)]*)\))?\s*(?:@(?P<cut>.*))?")
_SHAPE = "a measure is a metric name, optionally (rel=LEVEL) and @CUTOFF, e.g. P(rel=2)@5"


def parse_measure(text: str, default_cutoff: int | None = None) -> Measure:
    """Parse ``nDCG@20``, ``RR``, ``AP@100``, ``P(rel=2)@5``, ``P'@10``, trec_eval's ``P_10``, ir_measures'
    ``P(judged_only=True)@10`` (the condensed-list twin, ``P'@10``), or an alias at `default_cutoff`.

    Round-trips: ``str(parse_measure(s)) == s`` for canonical strings.
    """
    raw = text.strip()
    trec = re.fullmatch(r"([A-Za-z_]+?)[_.](\d+)", raw)  # P_10, or trec_eval -m P.10
    if raw.lower() in _TREC_PLAIN:
        raw = _TREC_PLAIN[raw.lower()]
    elif trec and trec.group(1).lower() in _TREC_NAMES:
        raw = f"{_TREC_NAMES[trec.group(1).lower()]}@{trec.group(2)}"
    parts = _MEASURE.fullmatch(raw)
    if parts is None:
        raise invalid(_SHAPE, "measure", text)
    m = metric(parts["name"])
    level: int | None = None
    for param in [] if parts["params"] is None else parts["params"].split(","):
        name, equals, value = (part.strip() for part in param.partition("="))
        if name == "rel" and equals:
            if not value.isdigit() or int(value) < 1:
                raise invalid("a relevance level is a whole number >= 1, e.g. P(rel=2)@5", "measure", text)
            if m.level != "retrieval":
                raise invalid(f"{m.name} does not depend on a relevance level", "measure", text)
            level = int(value)
        elif name == "judged_only" and value in ("True", "False"):
            m = _judged_only(m, value == "True", text)
        else:
            raise invalid(_SHAPE, "measure", text)
    cut = parts["cut"]
    cutoff: int | None
    if cut is not None:
        if not cut.isdigit() or not 1 <= int(cut) <= 100_000:
            raise invalid("a cutoff is a whole number from 1 to 100000", "measure", text)
        cutoff = int(cut)
    else:
        cutoff = default_cutoff if m.cutoff == "required" else None
    if m.cutoff == "none" and cut is not None:
        raise invalid(f"{m.name} takes no cutoff", "measure", text)
    if m.cutoff == "required" and cutoff is None:
        raise invalid(f"{m.family} needs a cutoff, e.g. {m.family}@10", "measure", text)
    return Measure(m, cutoff, level)


def _judged_only(m: Metric, judged_only: bool, text: str) -> Metric:
    """ir_measures' ``judged_only`` parameter: True names a metric's condensed-list twin, False its standard
    form."""
    standard = BY_KEY[m.condenses] if m.condenses else m
    if standard.key not in CONDENSED:
        twins = ", ".join(f"{BY_KEY[key].family} ({twin.family})" for key, twin in CONDENSED.items())
        raise invalid(f"judged_only applies to the metrics with a condensed-list twin: {twins}", "measure", text)
    return CONDENSED[standard.key] if judged_only else standard


__all__ = [
    "Metric",
    "RETRIEVAL_NA",
    "RETRIEVAL_FAILURE",
    "ASKS_ANSWER",
    "CHUNK_RANKS",
    "CHUNK_CITATIONS",
    "REGISTRY",
    "BY_KEY",
    "RETRIEVAL_KEYS",
    "RANKING_KEYS",
    "JUDGED_ONLY_KEYS",
    "CONDENSED",
    "LENIENT",
    "PARTIAL_WEIGHT",
    "SUPPORT_GRADES",
    "SUPPORT_LEVEL",
    "GRADED_RULE",
    "JUDGED_RULE",
    "ANSWER_KEYS",
    "COUNT_KEYS",
    "SEED_KEYS",
    "Operational",
    "OPERATIONAL",
    "metric",
    "operational",
    "measure_key",
    "display_name",
    "higher_is_better",
    "Measure",
    "parse_measure",
    "Level",
    "Cutoff",
    "Value",
]

"""The recorded runs: how each configuration behaves (`BEHAVIOURS`, probabilities per question type) and
what each run is (`RUNS`, and the free-text run `TEXT_RUN`): its retrieval, generation, failures and
notes, as its manifest states them."""
from __future__ import annotations

from dataclasses import dataclass

from .model import CHUNK_CHARS, CORPUS_VERSION, RETURNED


@dataclass(frozen=True)
class Behaviour:
    """How one configuration behaves, as probabilities per question type.

    `hit`: a supporting document reaches the first k (multi-evidence: its 2nd and 3rd claims use
    `hit_extra`; other positively graded documents `hit_background`); `above`: a trap (superseded,
    twin, non-authoritative) is ranked above the evidence, `below`: it is in the first k but under
    it; `follow`: the answer states what the first of them says; `hedge`: on outdated and
    conflicting questions the answer declines instead; `note`: it mentions a labelled conflict;
    `use`: it states a claim whose evidence it has; `guess`: it states a claim without its evidence
    in context (citing something else); `extra`: it adds an unrequested, unlabelled claim;
    `halluc`: it answers an unanswerable question from a look-alike document; `noise`: the share
    of draws not shared with the other configurations. Critical questions get `critical_boost` added to `hit` and
    `critical_above` times `above`: production pins the current, authoritative documents of
    critical topics, and the reranker reorders without those pins.
    """

    hit: dict[str, float]
    hit_extra: float
    hit_background: float
    above: dict[str, float]
    below: float
    follow: float
    hedge: float
    note: float
    use: float
    guess: float
    extra: float
    halluc: float
    noise: float
    critical_boost: float = 0.35
    critical_above: float = 0.2


BASE_HIT = {"lookup": 0.84, "multi-evidence": 0.92, "near-duplicate": 0.9, "outdated": 0.95, "conflicting": 0.95,
            "permission": 0.92}
BASE_ABOVE = {"near-duplicate": 0.3, "outdated": 0.06, "conflicting": 0.08, "other": 0.04}
BEHAVIOURS = {
    "prod": Behaviour(
        hit=BASE_HIT, hit_extra=0.4, hit_background=0.45,
        above=BASE_ABOVE,
        below=0.3, follow=0.85, hedge=0.55, note=0.8, use=0.99, guess=0.8, extra=0.12, halluc=0.16, noise=0.0),
    "rerank": Behaviour(
        hit={"lookup": 0.97, "multi-evidence": 0.97, "near-duplicate": 0.94, "outdated": 0.94, "conflicting": 0.94,
             "permission": 0.95},
        hit_extra=0.95, hit_background=0.7,
        above={"near-duplicate": 0.05, "outdated": 0.45, "conflicting": 0.45, "other": 0.04},
        below=0.3, follow=0.75, hedge=0.55, note=0.8, use=0.99, guess=0.8, extra=0.03, halluc=0.16, noise=0.12,
        critical_boost=0.0, critical_above=1.0),
    "hybrid": Behaviour(
        hit={"lookup": 0.84, "multi-evidence": 0.92, "near-duplicate": 0.92, "outdated": 0.94, "conflicting": 0.95,
             "permission": 0.92},
        hit_extra=0.44, hit_background=0.5,
        above={"near-duplicate": 0.25, "outdated": 0.08, "conflicting": 0.08, "other": 0.04},
        below=0.3, follow=0.85, hedge=0.55, note=0.8, use=0.99, guess=0.8, extra=0.12, halluc=0.16, noise=0.35),
    "temp07": Behaviour(
        hit=BASE_HIT, hit_extra=0.4, hit_background=0.45,
        above=BASE_ABOVE,
        below=0.3, follow=0.8, hedge=0.6, note=0.8, use=0.96, guess=0.8, extra=0.15, halluc=0.2, noise=0.0),
}


STRATIFIED = ("hit", "trap", "follow", "hedge", "use", "guess", "extra", "halluc")
"""Draw kinds spread evenly over each question type (see `Simulator._draws`)."""


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    behaviour: str
    retrieval_of: str | None
    created_at: str
    retrieval: dict[str, object]
    generation: dict[str, object]
    notes: str
    failures: int
    missing: int = 0
    group: str | None = None
    repeat: int | None = None
    rerank_ms: float = 0.0
    rerank_cost: float = 0.0
    chunk_chars: int | None = None
    """Retrieve chunks of at most this many characters (the run's own chunk map) instead of documents."""


PROD_RETRIEVAL = {"retriever": "hybrid-bm25-dense", "index": CORPUS_VERSION, "fusion": "weighted-sum",
                  "bm25_weight": 0.35, "candidates": 50, "reranker": None, "prefer_latest_version": True,
                  "pinned": "critical-topics",
                  "acl_filter": "before-retrieval", "returned": RETURNED}
MODEL = "halyard-answer-l-2026-08"
PROMPT = "answer-prompt-v14"
RUNS = (
    RunSpec("prod-baseline", "prod", None, "2026-11-02T08:15:00Z", PROD_RETRIEVAL,
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            "Production configuration as deployed on 2026-10-28.", failures=2),
    RunSpec("rerank-v2", "rerank", None, "2026-11-03T10:40:00Z",
            PROD_RETRIEVAL | {"reranker": "xenc-rerank-v2", "rerank_depth": 50, "prefer_latest_version": False,
                              "pinned": None,
                              "acl_filter": "before-retrieval; reranker reads its own candidate cache"},
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            "Cross-encoder reranker over the top 50 candidates. The version-recency boost and the pins for "
            "critical topics are not applied after reranking.", failures=3, rerank_ms=240.0, rerank_cost=0.0008),
    RunSpec("hybrid-v1", "hybrid", None, "2026-11-04T14:05:00Z",
            PROD_RETRIEVAL | {"fusion": "reciprocal-rank", "rrf_k": 60, "bm25_weight": None},
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            "Reciprocal-rank fusion instead of the weighted sum. Two questions have no record: the batch job "
            "dropped them after a worker restart.", failures=2, missing=2, rerank_ms=15.0),
) + tuple(
    RunSpec(f"temp07-r{n}", "temp07", "prod-baseline", f"2026-11-05T{8 + n:02d}:00:00Z", PROD_RETRIEVAL,
            {"temperature": 0.7, "top_p": 0.95, "max_output_tokens": 400},
            f"Production retrieval with sampling at temperature 0.7, repeat {n} of 3.", failures=1 if n != 2 else 2,
            group="temp07", repeat=n)
    for n in (1, 2, 3)
) + (
    RunSpec("chunk-160", "prod", "prod-baseline", "2026-11-06T09:30:00Z",
            PROD_RETRIEVAL | {"index": f"{CORPUS_VERSION}/sentences-{CHUNK_CHARS}", "unit": "chunk",
                              "chunking": f"whole sentences, at most {CHUNK_CHARS} characters", "chunk_overlap": 0},
            {"temperature": 0.0, "max_output_tokens": 400, "seed": 7},
            f"Production retriever and model over sentence-sized chunks (at most {CHUNK_CHARS} characters) instead "
            "of whole documents; the chunk map is runs/chunk-160/chunks.jsonl.", failures=2,
            chunk_chars=CHUNK_CHARS),
)
"""The simulated runs, in the order they are simulated (a run may reuse an earlier run's retrieval)."""

TEXT_RUN = RunSpec("prod-text", "prod", None, "2026-11-07T09:00:00Z", PROD_RETRIEVAL,
                   {"temperature": 0.0, "max_output_tokens": 400, "seed": 7, "answer_format": "sentences"},
                   "Production retrieval and model with the free-text answer prompt: the answer as sentences, each "
                   "citing indexes into the retrieved list (the TREC RAG format), aligned to the claims at refresh.",
                   failures=2)
"""Production's answers written as sentences: the same retrieval and claims as prod-baseline (`free_text`)."""
TEXT_PROMPT = "answer-prompt-v14-sentences"
